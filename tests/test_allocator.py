"""Arrow's allocator and the C library's mmap threshold (issue 31: the 131,072-card run died
on address space, not RSS: jemalloc keeps every mapping it made). Chosen once by the run
store (``rundir._memory_pool``): the system allocator, and every block of at least
``MMAP_THRESHOLD`` its own mapping, handed back when freed."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from sncheck.store.rundir import _memory_pool


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mapped() -> int:
    """Bytes glibc's malloc holds in blocks that are their own mappings (``hblkhd``)."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("not glibc 2.33 or later: no mallinfo2 to read")
    libc.mallinfo2.restype = _MallInfo2
    return int(libc.mallinfo2().hblkhd)


def test_arrow_allocates_from_the_system_allocator():
    _memory_pool()
    assert pa.default_memory_pool().backend_name == "system"


def test_blocks_above_the_threshold_are_mapped_even_after_a_larger_one_was_freed():
    """glibc's default threshold slides up to the largest mapped block freed (to 32 MiB), and
    blocks below it then stay in its heaps when freed: a fleet's millions of rows in arrays
    of a few MiB each would never go back. Fixed, a 4 MiB block is mapped after a 16 MiB one
    was freed, numpy's and Arrow's alike. In a fresh interpreter, as a run starts: in this one
    the earlier tests' freed heap chunks of 4 MiB or more would serve the block (malloc reuses
    a free chunk before it asks the system), which says nothing of the threshold."""
    _mapped()  # (skips where there is no mallinfo2)
    code = """
import sys
import numpy as np, pyarrow as pa
sys.path.insert(0, {tests!r})
from test_allocator import _mapped
from sncheck.store.rundir import MMAP_THRESHOLD, _memory_pool
_memory_pool()
size = 4 << 20
assert size >= MMAP_THRESHOLD
big = np.ones((16 << 20) // 8)
del big  # (what raises glibc's sliding threshold to 16 MiB)
before = _mapped()
array = np.ones(size // 8)
assert _mapped() >= before + size, ("numpy", before, _mapped())
buffer = pa.allocate_buffer(size)
assert _mapped() >= before + 2 * size, ("arrow", before, _mapped())
del array, buffer
assert _mapped() < before + size, ("freed", before, _mapped())
""".format(tests=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
