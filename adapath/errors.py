"""The one error type a user sees: a bad file, a bad argument, a bad record."""


class InputError(Exception):
    """A user mistake. The CLI prints it as one line and exits with status 2.

    The message names the file (and line, where there is one) and what is wrong.
    """
