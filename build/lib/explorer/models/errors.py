"""The one base of every error a person can cause: a file, a model folder, a sentence, a head list, an option,
a corpus or a Ray address that cannot be used. Each message names what the person gave and what to do. The command
line (explorer/cli) prints one as a single `error:` line and the pages (pages/components/errors.py) as a message, each
catching this base in one place; anything else that goes wrong is a bug and keeps its traceback.

It lives in models/ because models/ raises most of them and may import nothing above it. It is a ValueError, as the
errors it unites always were, so code that caught one of them before keeps working."""


class ExplorerError(ValueError):
    """Something the person gave cannot be used; the message says what and what to do."""
