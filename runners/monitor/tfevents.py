"""TensorBoard event files read without TensorFlow or torch: the TFRecord framing and the few
protobuf fields a scalar needs, decoded by hand. A tail is read from any offset: records are
found again by their length's CRC32C, which only a real record header carries.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass

_MASK_DELTA = 0xA282EAD8


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data`."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


@dataclass(frozen=True)
class Scalar:
    step: int
    wall_time: float
    tag: str
    value: float


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message; raises on a malformed one."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _tensor_value(buf: bytes) -> float | None:
    """A scalar TensorProto's value: float_val (5), double_val (6) or 4-byte tensor_content."""
    for number, _wire, value in _fields(buf):
        if number == 5:
            return struct.unpack("<f", value[:4])[0]
        if number == 6:
            return struct.unpack("<d", value[:8])[0]
        if number == 4 and len(value) == 4:
            return struct.unpack("<f", value)[0]
    return None


def _scalars(event: bytes) -> list[Scalar]:
    step, wall, values = 0, 0.0, []
    for number, wire, value in _fields(event):
        if number == 1 and wire == 1:
            wall = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            step = value
        elif number == 5 and wire == 2:
            for vnum, vwire, item in _fields(value):
                if vnum != 1 or vwire != 2:
                    continue
                tag, scalar = "", None
                for fnum, fwire, fval in _fields(item):
                    if fnum == 1 and fwire == 2:
                        tag = fval.decode("utf-8", "replace")
                    elif fnum == 2 and fwire == 5:
                        scalar = struct.unpack("<f", fval)[0]
                    elif fnum == 8 and fwire == 2:
                        scalar = _tensor_value(fval)
                if tag and scalar is not None:
                    values.append((tag, scalar))
    return [Scalar(step, wall, tag, v) for tag, v in values]


def read_scalars(data: bytes, from_tail: bool = False) -> list[Scalar]:
    """Every scalar in `data` (a whole file, or its tail when `from_tail`), in file order."""
    out: list[Scalar] = []
    pos = _resync(data, 0) if from_tail else 0
    while pos + 12 <= len(data):
        header = data[pos : pos + 8]
        if struct.unpack("<I", data[pos + 8 : pos + 12])[0] != masked_crc(header):
            pos = _resync(data, pos + 1)
            continue
        (length,) = struct.unpack("<Q", header)
        end = pos + 12 + length + 4
        if end > len(data):
            break  # the writer is mid-record
        with contextlib.suppress(ValueError, IndexError, struct.error):
            out += _scalars(data[pos + 12 : pos + 12 + length])
        pos = end
    return out


def _resync(data: bytes, start: int) -> int:
    """The next offset whose 8 bytes are followed by their own masked CRC (a record header)."""
    for pos in range(start, max(start, len(data) - 11)):
        (length,) = struct.unpack_from("<Q", data, pos)
        if length > 1 << 26:
            continue
        if struct.unpack_from("<I", data, pos + 8)[0] == masked_crc(data[pos : pos + 8]):
            return pos
    return len(data)
