"""The adapters' session lock: one holder at a time across threads and event loops, in arrival order, and
a waiter that is cancelled (before or just after the lock is handed to it) never keeps it."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sessiontree.integrations._lock import SessionLock, in_worker, session_lock


def test_one_holder_at_a_time_across_threads_loops_and_sync_callers() -> None:
    lock = SessionLock()
    inside = 0
    most = 0
    guard = threading.Lock()

    def critical() -> None:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
        time.sleep(0.002)
        with guard:
            inside -= 1

    async def coroutine_holder() -> None:
        for _ in range(20):
            async with lock.held():
                critical()
                await asyncio.sleep(0)

    def work(n: int) -> None:
        if n % 2:
            asyncio.run(coroutine_holder())
        else:
            for _ in range(20):
                with lock.hold():
                    critical()

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(work, range(6)))
    assert most == 1


def test_waiters_get_the_lock_in_arrival_order() -> None:
    lock = SessionLock()
    order: list[int] = []

    async def main() -> None:
        await lock.acquire_async()

        async def waiter(n: int) -> None:
            async with lock.held():
                order.append(n)

        tasks = [asyncio.create_task(waiter(n)) for n in range(5)]
        await asyncio.sleep(0.01)
        lock.release()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert order == [0, 1, 2, 3, 4]


def test_a_cancelled_waiter_does_not_keep_the_lock() -> None:
    lock = SessionLock()

    async def main() -> None:
        await lock.acquire_async()
        waiting = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        lock.release()
        await asyncio.wait_for(lock.acquire_async(), 5)  # free again
        lock.release()

    asyncio.run(main())


def test_a_waiter_cancelled_just_after_the_hand_over_passes_the_lock_on() -> None:
    lock = SessionLock()

    async def main() -> None:
        await lock.acquire_async()
        waiting = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0.01)
        lock.release()  # handed to the waiter, which has not run yet
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.wait_for(lock.acquire_async(), 5)
        lock.release()

    asyncio.run(main())


def test_a_synchronous_call_under_a_coroutine_of_the_same_loop_is_refused() -> None:
    """It would wait forever for the coroutine its own thread is running."""
    lock = SessionLock()

    async def main() -> None:
        async with lock.held():
            with pytest.raises(RuntimeError, match="call the async method"):
                lock.acquire()

    asyncio.run(main())


def test_every_adapter_on_one_manager_shares_its_lock() -> None:
    class Manager:
        pass

    one, other = Manager(), Manager()
    assert session_lock(one) is session_lock(one)
    assert session_lock(one) is not session_lock(other)


def test_in_worker_waits_for_the_thread_when_cancelled() -> None:
    done = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        done.set()

    async def main() -> None:
        task = asyncio.create_task(in_worker(slow))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert done.is_set()  # the cancellation went on only once the work was over

    asyncio.run(main())
