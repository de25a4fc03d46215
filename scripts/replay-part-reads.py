"""The reads ``scripts/trace-part-reads.py`` wrote (OUT.json) replayed over RUN's parts,
without the run store's column cache and with it, alternately, three times (CPU seconds;
issue 31, README "Fleet scale", round 10):

    python3 scripts/replay-part-reads.py RUN OUT.json"""

import json
import pathlib
import sys
import time

import pyarrow.parquet as pq

from sncheck.store.columncache import ColumnCache, identity
from sncheck.store.parts import Part


def main() -> None:
    run, reads = pathlib.Path(sys.argv[1]), json.load(open(sys.argv[2]))
    for _ in range(3):
        for label, cache in (("without", None), ("with", ColumnCache())):
            kinds: dict[str, list[Part]] = {}
            made: dict[tuple[str, str], Part] = {}
            for kind, name, _cols in reads:
                if (kind, name) not in made:
                    path = run / "rows" / kind / name
                    meta = pq.read_metadata(path)
                    kin = kinds.setdefault(kind, [])
                    made[(kind, name)] = Part(path, meta.num_rows, meta.schema.to_arrow_schema().names, None, own=True,
                                              cache=cache, written=identity(path.stat()) if cache else None, kin=kin)
                    kin.append(made[(kind, name)])
            t = time.process_time()
            for kind, name, cols in reads:
                made[(kind, name)].read(cols)
            held = f", holding {cache.held / 2**20:.0f} MiB" if cache else ""
            print(f"{label} the cache: {len(reads)} reads, {time.process_time() - t:.2f} s CPU{held}")


if __name__ == "__main__":
    main()
