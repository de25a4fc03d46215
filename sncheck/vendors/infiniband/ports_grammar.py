"""The grammars of ``ibv-devinfo`` and ``ibportstate`` (:mod:`sncheck.vendors.infiniband.ports`,
whose docstring has the JSON they read to), from rdma-core's own source."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

GRAMMAR = {
    "ibv-devinfo": Grammar(
        tool="ibv_devinfo [-v] [-d DEV] (rdma-core libibverbs examples)",
        versions="libibverbs 1.1.8, rdma-core v15 and later",
        sources=(
            "linux-rdma/rdma-core libibverbs/examples/devinfo.c @ 691953d (print_hca_cap: 'hca_id:\\t%s\\n', "
            "'\\ttransport:\\t\\t\\t%s (%d)\\n', fw_ver, node_guid, sys_image_guid, vendor_id, vendor_part_id, hw_ver, "
            "board_id, phys_port_cnt; with -v the max_* lines; per port '\\t\\tport:\\t%d\\n' then "
            "'\\t\\t\\tstate:\\t\\t\\t%s (%d)\\n' (port_state_str: PORT_DOWN, PORT_INIT, PORT_ARMED, PORT_ACTIVE, "
            "PORT_ACTIVE_DEFER), max_mtu, active_mtu ('%s (%d)'), sm_lid, port_lid, port_lmc, link_layer; -v: "
            "active_width, active_speed, phys_state (IB transport)); a blank line after each device)",
            "linux-rdma/rdma-core libibverbs/examples/devinfo.c: 'No IB devices found', 'Failed to open device', "
            "'Failed to query port' (stderr)",
        ),
        lines=("per device 'hca_id:<TAB>NAME', then '<TAB>KEY:<TABS>VALUE' lines (transport 'InfiniBand (0)', "
               "fw_ver, node_guid, sys_image_guid, vendor_id, vendor_part_id, hw_ver, board_id, phys_port_cnt); per "
               "port '<TAB><TAB>port:<TAB>N' then '<TAB><TAB><TAB>KEY:<TABS>VALUE' lines: state 'PORT_ACTIVE (4)', "
               "max_mtu/active_mtu '4096 (5)', sm_lid, port_lid, port_lmc '0x00', link_layer InfiniBand|Ethernet; "
               "-v adds capability lines and, per port, active_width '4X (2)', active_speed '25.0 Gbps (32)', "
               "phys_state 'LINK_UP (5)', GIDs"),
        end=("every device lists phys_port_cnt ports, each with its state line and through its link_layer line "
             "(print_hca_cap prints it for every port after port_lmc; -v's fields after it vary: harvest 9's random "
             "cuts of a one-port capture between state and link_layer read as whole)"),
        failures=("a port whose state is not PORT_ACTIVE, a phys_state other than LINK_UP (faults); 'No IB devices "
                  "found', 'Failed to open device', 'Failed to query port', a port listed twice or outside 1..phys_port_cnt "
                  "(errors: devinfo.c's loop prints each once)"),
        values=("devices[{name, transport, fw_ver, node_guid, board_id, vendor_part_id, phys_port_cnt, ports[{port, "
                "state, state_code, phys_state, link_layer, active_mtu, active_width, active_speed, port_lid, "
                "sm_lid}]}], faults, errors"),
    ),
    "ibportstate": Grammar(
        tool="ibportstate [-C CA] [-P PORT] [-D] LID PORTNUM [query, enable, disable, reset, speed ...] (infiniband-diags)",
        versions="infiniband-diags 1.5 and later, and its rdma-core copy",
        sources=(
            "linux-rdma/rdma-core infiniband-diags/ibportstate.c (main(): get_port_info prints '%s PortInfo:' "
            "('CA/RT', 'Switch'; 'Initial %s PortInfo:' before a change), then show_port_info's '# Port info: %s "
            "port %d' and the fields; on a Mellanox device the '# MLNX ext Port info: %s port %d' block; a change "
            "prints 'After PortInfo set:' and the block again ('Port is already in enable state' for an enable "
            "that changes nothing; 'Disable may be irreversible' printed before it for disable/off, harvest17); an Active switch port other than 0 'Peer PortInfo:' and the peer's block; "
            "the width and speed check 'Peer ports operating at active width %d rather than %d' (IBWARN))",
            "linux-rdma/rdma-core libibmad/dump.c (mad_dump_portinfo, the field names and value words "
            "LinkState Down/Init/Armed/Active, PhysLinkState Sleep/Polling/Disabled/PortConfigurationTraining/"
            "LinkUp/LinkErrorRecovery/PhyTest; mad_dump_mlnx_ext_port_info: StateChangeEnable .. LinkSpeedActive), "
            "libibmad/fields.c (the 'Name:....value' padding with dots to column 33; the Mellanox ExtendedPortInfo "
            "fields StateChangeEnable, LinkSpeedSupported/Enabled/Active, each mad_dump_hex)",
            "linux-rdma/rdma-core infiniband-diags/iblinkinfo.c print_port (FDR10: no extended speed active and the "
            "MLNX ext LinkSpeedActive & FDR10 -> '10.0 Gbps (FDR10)'; ibportstate.c main() reads the same bit for its "
            "'Peer ports operating at active speed %d rather than FDR10' check)",
        ),
        lines=("'[Initial |After ]CA/RT|Switch|Peer PortInfo:' ('CA PortInfo:' in infiniband-diags 1.5.x, its CA "
               "block ending at LinkSpeedActive: no M_Key, no Ext lines; ibportstate.c of 1.5, code corpus file id "
               "4677905677, harvest25) then '# Port info: Lid L port N' (or 'DR path slid "
               "...') and one 'Name:....value' line a field: LinkState, PhysLinkState, Lid, SMLid, LMC, "
               "LinkWidthSupported/Enabled/Active ('1X or 4X', '4X'), LinkSpeedSupported/Enabled/Active ('2.5 Gbps "
               "or 5.0 Gbps'), LinkSpeedExt* ('14.0625 Gbps', '53.125 Gbps'), LinkSpeedExt*2 ('106.25 Gbps'); a CA's "
               "(and a switch's port 0) Mkey, MkeyLeasePeriod, ProtectBits; '# MLNX ext Port info: ...' with "
               "StateChangeEnable, LinkSpeedSupported/Enabled/Active as hex masks; with -d, 'ibwarn: [pid] FUNC: ...' "
               "debug lines anywhere"),
        end=("main()'s order: each port block down to LinkSpeedActive (a CA's to ProtectBits), its MLNX ext block "
             "down to LinkSpeedActive, a change's 'After PortInfo set:' block, an Active switch port's peer block"),
        failures=("LinkState not Active, PhysLinkState not LinkUp, 'Peer ports operating at active width/speed ...' "
                  "(faults); 'ibpanic: ...', 'ibportstate: iberror: ...' (errors; other ibwarn lines are -d debug, and "
                  "'Disable may be irreversible' main()'s own note: kept in warnings, not judged)"),
        values=("ports[{role, lid, port, fields{Name: value}, link_state, phys_state, width, speed}], warnings, faults, "
                "errors; speed is LinkSpeedExtActive, or LinkSpeedActive where that reads 'No Extended Speed' (libibmad "
                "dump.c mad_dump_linkspeedext: 0 prints 'No Extended Speed', rdma-core's LinkSpeedExtActive2 'No Extended "
                "Speed 2'; mad_dump_linkspeed: 0 prints 'Extended speed', the speed then in the Ext field; harvest25); "
                "where no extended speed is active and the port's MLNX ext LinkSpeedActive has the FDR10 bit (0x01, "
                "ibnetdisc.h FDR10; libibmad fields.c dumps it with mad_dump_hex: '0x01'), the port runs FDR10 "
                "(10.3125 Gb/s a lane, 64b/66b) though its LinkSpeedActive reads QDR's '10.0 Gbps': speed is then "
                "'10.0 Gbps (FDR10)', as infiniband-diags' iblinkinfo.c print_port writes it (the 'After PortInfo "
                "set:' block: the same port's MLNX ext state)"),
    ),
}
