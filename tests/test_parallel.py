import os
import threading

import pytest

from llm_graphrag import parallel


def square(n):
    if n == 13:
        raise ValueError("unlucky 13")
    return n * n


STATE = {}


def remember(offset):
    STATE["offset"] = offset


def shifted(n):
    return n + STATE["offset"]


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_ordered_map_keeps_input_order(workers):
    assert list(parallel.ordered_map(square, iter(range(12)), workers)) == [n * n for n in range(12)]


@pytest.mark.parametrize("workers", [0, 2])
def test_initializer_sets_up_each_worker(workers):
    results = parallel.ordered_map(shifted, range(5), workers, initializer=remember, initargs=(100,))
    assert list(results) == [100, 101, 102, 103, 104]


@pytest.mark.parametrize("workers", [0, 2])
def test_an_error_in_a_worker_reaches_the_caller(workers):
    results = parallel.ordered_map(square, range(20), workers)
    assert [next(results) for _ in range(13)] == [n * n for n in range(13)]
    with pytest.raises(ValueError, match="unlucky 13"):
        next(results)


def test_no_workers_are_forked_from_a_thread():
    found = []
    thread = threading.Thread(target=lambda: found.append(parallel.default_workers()))
    thread.start()
    thread.join()
    assert found == [0]
    assert parallel.default_workers() >= 1


def test_a_forking_thread_may_fork_workers_while_it_says_so():
    found = []

    def run():
        with parallel.forking_thread():
            found.append(parallel.default_workers())
        found.append(parallel.default_workers())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert found == [os.cpu_count(), 0]


def test_worker_count(monkeypatch):
    monkeypatch.setattr(parallel, "default_workers", lambda: 4)
    small, large = parallel.MIN_ITEMS - 1, parallel.MIN_ITEMS
    assert [
        parallel.worker_count(None, small),
        parallel.worker_count(None, large),
        parallel.worker_count(None, large, most=1),
        parallel.worker_count(0, large),
        parallel.worker_count(3, small),
        parallel.worker_count(3, small, most=1),
    ] == [0, 4, 1, 0, 3, 1]


def test_gc_paused_turns_collection_back_on_and_frees_cycles():
    import gc
    import weakref

    class Node:
        pass

    assert gc.isenabled()
    with parallel.gc_paused():
        assert not gc.isenabled()
        node = Node()
        node.self = node
        alive = weakref.ref(node)
        del node
        assert alive() is not None  # a cycle: only the collector frees it
    assert gc.isenabled()
    assert alive() is None


def test_gc_paused_leaves_collection_off_when_it_was_off():
    import gc

    gc.disable()
    try:
        with parallel.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def offset_square(n):
    return n * n + STATE["offset"]


@pytest.mark.parametrize("enabled", [False, True])
def test_side_process_runs_calls_after_its_initializer(enabled):
    STATE.clear()
    with parallel.SideProcess(enabled, remember, (100,)) as side:
        jobs = [side.submit(offset_square, n) for n in range(5)]
        assert [job.result() for job in jobs] == [100, 101, 104, 109, 116]
        with pytest.raises(ValueError, match="unlucky"):
            side.submit(square, 13).result()
    # The initializer ran here only when there was no process to run it in.
    assert STATE == ({} if enabled else {"offset": 100})


def niceness(_):
    return os.nice(0)


def test_nice_lowers_the_workers_priority_only():
    before = os.nice(0)
    assert list(parallel.ordered_map(niceness, range(3), 2, nice=5)) == [before + 5] * 3
    assert list(parallel.ordered_map(niceness, range(3), 0, nice=5)) == [before] * 3
    assert os.nice(0) == before
