"""A server told to stop by a signal stops, whichever of its threads the signal lands on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

LANDING_ON_ANOTHER_THREAD = textwrap.dedent(
    """
    import os, select, signal, socket, threading, time
    from memsearch_lsp.core.process import end_on_signals

    end_on_signals(lambda: os._exit(7), "test-exit")

    def reader():  # the stdio loop's thread reading stdin, where the kernel may deliver the signal
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIG{name})
        time.sleep(60)

    threading.Thread(target=reader, daemon=True).start()
    quiet, _ = socket.socketpair()
    select.select([quiet], [], [])  # the main thread: the event loop waiting for a message that never comes
    os._exit(1)
    """
)


@pytest.mark.parametrize("name", ["TERM", "INT", "HUP"])
def test_a_signal_landing_on_a_thread_other_than_the_main_one_still_ends_the_process(name: str) -> None:
    """(CI, stop 62) `serve` sent SIGTERM before initialize did not exit within 60 s, once in a full run: Python runs
    a signal's handler in the main thread only, when it next runs Python code, and a signal the kernel gave the
    thread reading stdin left the main thread waiting in its event loop for a message that never came. The old
    handler hangs here (killed at 20 s)."""
    script = LANDING_ON_ANOTHER_THREAD.replace("{name}", name)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not end on the signal")
    assert done.returncode == 7, done.stderr


def test_other_signals_python_handles_do_not_end_the_process() -> None:
    """The wakeup fd says every signal with a Python handler; one that is not SIGTERM, SIGHUP or SIGINT ends nothing."""
    script = textwrap.dedent(
        """
        import os, signal, time
        from memsearch_lsp.core.process import end_on_signals

        seen = []
        signal.signal(signal.SIGUSR1, lambda *_: seen.append(1))
        end_on_signals(lambda: os._exit(7), "test-exit")
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(1.0)
        os._exit(3 if seen else 4)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert done.returncode == 3, done.stderr
