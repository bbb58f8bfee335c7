"""structlog set-up: JSON lines in worker processes, readable lines on a terminal.

Libraries that log through the standard library (RQ does) go through the same renderer. A log
line that cannot be written (a full disk under the log file, a closed terminal) is dropped,
never raised: no process of the stack dies because its log could not be written.
"""

import contextlib
import logging
import sys
from typing import TYPE_CHECKING, TextIO

import structlog

if TYPE_CHECKING:
    from projections.event_log import OnQuarantine
    from schemas.status import Quarantined

_SHARED: list[structlog.typing.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


class ForgivingStream:
    """A text stream whose failed writes are dropped instead of raised."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):  # no space left, a broken pipe, a closed file
            return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


def configure_logging(json: bool, level: int = logging.INFO) -> None:
    stream = ForgivingStream(sys.stderr)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[*_SHARED, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(stream),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *_SHARED],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def quarantine_logger(logger: structlog.typing.FilteringBoundLogger) -> "OnQuarantine":
    """What says in `logger`'s log that a segment was set aside (the note beside it has the rest)."""

    def warn(note: "Quarantined") -> None:
        logger.warning(
            "segment.quarantined",
            segment=note.segment,
            moved_to=note.moved_to,
            reason=note.reason,
            salvaged=note.salvaged,
            lost=note.lost,
        )

    return warn
