"""The grammars of the ``ibnetdiscover`` and ``iblinkinfo`` views
(:mod:`sncheck.vendors.infiniband.ibnetdiscover`), read in rdma-core's infiniband-diags."""

from __future__ import annotations

from sncheck.vendors.grammar import Grammar

_DIAGS = "linux-rdma/rdma-core infiniband-diags @ 691953d (v64.0-61, 2026-08)"
_SPEEDS = "SDR DDR QDR FDR10 FDR EDR HDR NDR XDR ???"

GRAMMAR = {
    "ibnetdiscover": Grammar(
        tool="ibnetdiscover [--full] (infiniband-diags), the topology file",
        versions="infiniband-diags 1.6 to rdma-core 64",
        sources=(
            f"{_DIAGS} ibnetdiscover.c dump_topology: the '#' header ('# Topology file: generated on <ctime>', "
            "'# Initiated from node <16 hex> port <16 hex>', '# Max of %d hops discovered': "
            "fabric->maxhops_discovered, past 0 only with a node that far, so one node under 1+ hops is cut), "
            "then a record per node (switches first, then CAs, "
            "then routers), each after a blank line",
            f"{_DIAGS} ibnetdiscover.c out_node / out_switch / out_ca: 'vendid=0x%x', 'devid=0x%x', "
            "'sysimgguid=0x%llx' (when nonzero), 'switchguid=0x%llx(%llx)' | 'caguid=0x%llx' | 'rtguid=0x%llx', "
            "'Switch\\t%d \"S-%016llx\"\\t\\t# \"%s\" enhanced|base port 0 lid %d lmc %d', 'Ca\\t%d \"H-%016llx\"\\t\\t# "
            "\"%s\"' ('Rt'/'R-' for a router)",
            f"{_DIAGS} ibnetdiscover.c out_switch_port: '[%d][ext N]\\t\"S|H|R-<16 hex>\"[%d][ext N](%llx) \\t\\t# "
            "\"%s\" lid %d <width><speed>' (the far port GUID only for a non-switch far end); out_ca_port: "
            "'[%d](%llx) \\t\"...\"[%d] (%llx) \\t\\t# lid %d lmc %d \"%s\" lid %d <width><speed>'; --full adds "
            "' s=%d w=%d v=%d'; an Xsigo far end ' slot %d' or ' (scp)'",
            f"{_DIAGS} ibdiag_common.c dump_linkwidth_compat / dump_linkspeed(ext)_compat: widths 1x 2x 4x 8x 12x "
            f"(?? unknown), speeds {_SPEEDS}",
            f"{_DIAGS} ibnetdiscover.c dump_ports_report (-p, --ports; through ibnd_iter_nodes, every node, its "
            "ports from the highest down to 1): '%2s %5d %2d 0x%016llx %s %s' (SW/CA/RT/??, a switch's smalid or "
            "the port's base LID, port, port GUID, width, speed), then ' - %2s %5d %2d 0x%016llx ( '%s' - '%s' )' "
            "(the far end's, the node's and the far node's descriptions) or, with no far end, \"%36s'%s'\" (the "
            "description without its quotes in infiniband_exporter's test3 fixture, read alike)",
            "linux-rdma/rdma-core libibnetdisc/ibnetdisc.c recv_port0_info: PortInfo queried on every port 1..numports "
            "of a switch found (linked or not), so -p lists each switch port once; create_node puts each new node "
            "first in the list ibnd_iter_nodes walks, so the node it started from comes last",
        ),
        lines=("the '#' header; per node: vendid, devid, [sysimgguid], its guid line, its type line, then one "
               "line per connected port (ports without a link are not listed), the far end's node, port, "
               "description and LID, and the link's width and speed ('4xHDR'); a blank line between nodes. "
               "Grouping (-g) and the -s/-l/-H lists are other layouts, not this view. -p's ports report (no "
               "header, one line per port of every node, linked or not) is read as ports[]; a command line pasted above "
               "the output ('$ ibnetdiscover -p': delivery.command_line) is the reporter's, not a record"),
        end=("none: the file is whole when every link is listed from both ends, each far node's record present "
             "(a cut leaves a link whose far node has no record, or does not list it back); -p: every link's "
             "line listed back by its far port's line, and every switch's ports 1..N each listed once"),
        failures=("'ibwarn:'/'ibpanic:'/'ibnetdiscover:' lines, 'Failed', a record line the grammar does not hold, "
                  "a link not listed back, a node recorded twice (the BFS of ibnetdiscover.c marks each node "
                  "found once: two outputs spliced) (errors: the topology is not read as the fabric)"),
        values=("nodes[{type, guid, ports, desc, lid (a switch's), links[{port, remote_type, remote_guid, "
                "remote_port, remote_desc, remote_lid, width, speed, lid and port_guid (a CA's port)}]}], errors; "
                "-p: format 'ports', ports[{type, lid, port, guid, width, speed, desc, remote: {type, lid, port, "
                "guid, desc} or null}]"),
    ),
    "iblinkinfo": Grammar(
        tool="iblinkinfo [-l] [-a] [--switches-only, --cas-only] (infiniband-diags)",
        versions="infiniband-diags 1.6 to rdma-core 64 (the link field's widths changed; read by blanks)",
        sources=(
            f"{_DIAGS} iblinkinfo.c print_node_header: 'Switch: 0x%016llx %s:' (port 0's GUID), 'CA: %s:', "
            "'Router: %s:', printed with a node's first port (none with -l)",
            f"{_DIAGS} iblinkinfo.c print_port: '      [0x%016llx ]%6d %4d[%2s] ==%s==>  %s' (the port GUID on a "
            "CA or router, not on a switch; -l: '0x%016llx \"%30s\" ' first, the node's description on every "
            "line, and the far end's GUID before its LID); the link '(%3s %18s %6s/%8s)': width, speed "
            "('2.5 Gbps', '25.78125 Gbps', '10.0 Gbps (FDR10)'), state, physical state; a Down port "
            "'(              %6s/%8s)' without width or speed (C14-24.2.1); -a adds ' (HOQ:%d VL_Stall:%d)' on a "
            "port not Down",
            f"{_DIAGS} iblinkinfo.c print_port: the far end '%6d %4d[%2s] \"%s\" (%s %s)' (LID, port, ext port, "
            "description, then get_max_msg's 'Could be <width>' and 'Could be <speed>' when the link runs below "
            "what both ends support); a Down port '           [  ] \"\" ( )'; a port up whose far end was not "
            "discovered '    \"Port not available\"'",
            f"{_DIAGS} ibdiag_common.c get_max_msg; iblinkinfo.c main: 'Failed to open %s port %d', 'discover "
            "failed', 'Failed to find port: %s' on stderr",
        ),
        lines=("per node with ports to show: its header, then one line per port (1..numports): LID, port, the "
               "link's width, speed, state and physical state, and its far end. --diff prints '< '/'> ' pairs: "
               "not this view. A command line pasted above the output ('$ iblinkinfo': delivery.command_line) is "
               "the reporter's; any other line (a label such as 'link info:') is none of the grammar's"),
        end=("none: no end line, no count; a cut inside a line leaves a link field or a far end that is not "
             "whole, a cut between lines a shorter listing, so the judge's expectation (--expect, the ports it "
             "knows) counts the ports; a node header is always followed by its first port; print_node prints every port "
             "of a node it prints, so a link to a port of a listed node that lists no such port is a cut (harvest7's "
             "SB7700 listed to port 18, its CA on port 36: harvest19)"),
        failures=("'ibwarn:'/'iblinkinfo:' lines, 'Failed to open', 'discover failed', a line the grammar does not "
                  "hold, a '...' elision (errors); a Down port is the fabric's state, not a failure of the view"),
        values=("ports[{node, node_type, guid, lid, port, ext_port, width, speed, state, physical_state, "
                "hoq_life and vl_stall_count (-a), remote: {guid (-l), lid, port, ext_port, desc, "
                "could_be_width, could_be_speed} or null (Down), remote_not_available}], errors"),
    ),
}
