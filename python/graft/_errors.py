"""graft.GraftError: every error graft raises from Python carries the engine's or the op's message."""


class GraftError(RuntimeError):
    """An error reported by graft (engine build/run, plugin loading, export).

    ``code`` is graft's StatusCode name (e.g. "kInvalidArgument") when the error came from C++.
    Errors raised inside torch operators surface as RuntimeError (c10::Error) with the op's
    message; GraftError subclasses RuntimeError so ``except RuntimeError`` catches both.
    """

    def __init__(self, message, code=""):
        super().__init__(message)
        self.code = code
