"""Errors of the BPF side that are not yet tied to a place in an event string.

The caller that knows where the object was named (the path's span in the event string) turns an
``ObjectError`` into a Diagnostic with that span.
"""

from __future__ import annotations


class ObjectError(Exception):
    """A BPF object (or source) cannot be read, compiled or used.

    ``code`` is a stable diagnostic code (``EB…``); ``perf_message`` is perf's wording for the same
    failure where perf has one; ``detail`` holds extra lines (clang's output, a verifier log).
    ``finding``: the error is a verdict on the user's input, not a failure to get one (a program
    the verifier refuses): the command line reports it with the exit status of findings.
    ``errno``: what libbpf (or the kernel) returns for the same failure, where it returns one.
    """

    finding = False

    def __init__(
        self,
        code: str,
        message: str,
        *,
        perf_message: str | None = None,
        detail: str | None = None,
        help: tuple[str, ...] = (),
        errno: int | None = None,
    ) -> None:
        super().__init__(message)
        self.errno = errno
        self.code = code
        self.message = message
        self.perf_message = perf_message
        self.detail = detail
        self.help = help
