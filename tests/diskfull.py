"""What a child process's script runs to make its disk full once the pass context has closed:
the close line is on disk, and from then on no file can grow (``RLIMIT_FSIZE`` 0, a write past
it failing with EFBIG instead of killing the process). The script imports ``resource``,
``signal``, ``sys`` and ``RelayVizTrace`` before it."""

DISK_FULL_ONCE_THE_CONTEXT_CLOSED = '''
# A write past the limit fails with EFBIG ("File too large") instead of killing the process.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
exit_code = RelayVizTrace.exit_pass_ctx.__code__


def disk_full_once_the_context_closed(frame, event, arg):
    # The close line is on disk; from here on no file can grow, as on a full disk.
    if event == "return" and frame.f_code is exit_code:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        sys.setprofile(None)


sys.setprofile(disk_full_once_the_context_closed)
'''
