#!/usr/bin/env python3
"""A process that starts the agent itself, as cuhook attach would, with injector=PID, to test the
agent's watch where cuhook cannot be made to misbehave on cue (test_kill.py, watch_probe case):

    watch_probe.py AGENT LIBCUDA TRACE gone-before | pidfd-closed

gone-before:  PID is a process that has already exited and been reaped (a start that finished
              on its own after cuhook died): the agent must end the trace at once.
pidfd-closed: PID is a child of ours (sleep); once the agent started, we close the agent's pidfd
              of it and put /dev/null under the same number (a program closing descriptors it
              did not open), then kill the child: the agent must still see it gone (through
              /proc: a zombie) and must leave our /dev/null descriptor open.

Calls cuFakeConstB of the stand-in libcuda (loaded after the start: the agent patches it) until
the trace is closed or 3 s have passed. Prints (pidfd-closed) "active_before_kill 0|1", whether
the agent was still tracing while the child lived, and "fd_kept 0|1"; exits 0. The caller reads
the trace."""
import ctypes
import os
import subprocess
import sys
import time


def agent_pidfd(pid):
    """The descriptor of ours that is a pidfd of pid (its fdinfo names it)."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            with open("/proc/self/fdinfo/%s" % fd) as f:
                if "\nPid:\t%d\n" % pid in f.read():
                    return int(fd)
        except OSError:
            pass
    return None


def main():
    agent_path, lib_path, trace, mode = sys.argv[1:5]
    os.environ["CUHOOK_DISABLE"] = "1"  # the constructor must not start: we do, as cuhook would
    if mode == "gone-before":
        injector = subprocess.Popen(["true"])
        injector.wait()
    else:
        injector = subprocess.Popen(["sleep", "60"])
    agent = ctypes.CDLL(agent_path)
    opts = "output=%s;injector=%d" % (trace, injector.pid)
    rc = agent.cuhook_agent_start(opts.encode(), 0)
    if rc != 0:
        agent.cuhook_agent_last_error.restype = ctypes.c_char_p
        print("start failed: %d %s" % (rc, agent.cuhook_agent_last_error()))
        return 2
    lib = ctypes.CDLL(lib_path)
    if mode == "pidfd-closed":
        fd = agent_pidfd(injector.pid)
        if fd is None:
            print("no pidfd of %d among our descriptors" % injector.pid)
            return 2
        os.close(fd)
        null = os.open("/dev/null", os.O_RDONLY)
        if null != fd:
            print("/dev/null got %d, not the pidfd's number %d" % (null, fd))
            return 2
        for _ in range(20):
            lib.cuFakeConstB()
        time.sleep(0.2)  # a few writer rounds with the pidfd gone: the watch must go on
        print("active_before_kill %d" % agent.cuhook_agent_active())
        injector.kill()  # a zombie until we reap it: gone all the same
    end = time.monotonic() + 3
    while agent.cuhook_agent_active() and time.monotonic() < end:
        lib.cuFakeConstB()
        time.sleep(0.001)
    if mode == "pidfd-closed":
        try:
            os.fstat(null)
            print("fd_kept 1")
        except OSError:
            print("fd_kept 0")
        injector.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
