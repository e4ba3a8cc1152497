"""Text from a job's log or a remote made fit to print on a terminal (apart from `logscan`, so
printing a finding costs one regex, not the failure kinds' prefilter)."""

from __future__ import annotations

import re

# Every terminal control sequence: OSC/DCS/SOS/PM/APC strings (to BEL or ST, else to the line's
# end), CSI, other ESC sequences, a lone ESC, C0 controls but tab, newline and CR, DEL, C1. It
# starts with one character class, so clean text is scanned at memchr-like speed.
_STRING = r"[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
_CSI = r"[0-?]*[ -/]*[@-~]?"
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
    rf"(?:(?<=\x1b)(?:[\]PX^_]{_STRING}|\[{_CSI}|[ -/]*[0-~]?)"
    rf"|(?<=[\x90\x98\x9d\x9e\x9f]){_STRING}|(?<=\x9b){_CSI})?"
)


def terminal_safe(text: str, cr: str = "\n") -> str:
    """`text` with every terminal control sequence removed (anyone's program writes a log), a
    lone CR made `cr` (a newline: no progress bar update hides its line). Chunks of a stream may
    be passed one by one: a cut sequence leaves its printable tail, never a control byte."""
    text = _CONTROL.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", cr) if "\r" in text else text
