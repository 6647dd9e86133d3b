"""One helper thread that runs the numpy half of a query beside the caller's.

NumPy lets go of the interpreter lock inside its loops, so scoring one segment here while the
caller scores another uses a second core: at a million messages default retrieval's event
support (a top-k over 855k events) and its message spread each take several milliseconds.
Only work that reads prepared arrays comes here, never SQL: the caller's connection, and the
transaction it may be in, stay the caller's.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")

_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def _forget_pool() -> None:
    """A forked child has no helper thread, though it inherits the pool that had one."""
    global _POOL, _LOCK
    _POOL, _LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def submit(work: Callable[..., T], *args, **kwargs) -> Future[T]:
    """Start ``work(*args, **kwargs)`` on the helper thread; ``result()`` returns it or raises."""
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-search")
        return _POOL.submit(work, *args, **kwargs)
