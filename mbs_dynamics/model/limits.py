"""The one reader of the files the package takes in: URDF, trajectory (YAML/JSON), actuator and
other configuration YAML. Every file passes the same resource limits, checked on the raw text
(size) and on the parser's event stream (nesting depth, aliases, entries, expanded size) BEFORE
any Python object is built from it, so that a small hostile file (a YAML "alias bomb", 10⁵
nested brackets) or a huge one is refused in one line, fast and without the memory, instead of
growing until it is killed or ending in a RecursionError.

Limits (module constants; a file beyond one is a :class:`FileLimitError`, a ``ValueError``
naming the file and the limit):

========================  ==================  ==================================================
``MAX_FILE_BYTES``        32 MiB              size of one file (or of XML/YAML text passed in)
``MAX_DEPTH``             32                  nesting of lists/mappings (a trajectory needs 4)
``MAX_ALIASES``           1,000               YAML alias references (``*name``)
``MAX_NODES``             4,000,000           values after expanding every alias
``MAX_ITEMS``             100,000             entries of one list or mapping
``MAX_POINTS``            100,000             points of one trajectory (= ``MAX_ITEMS``)
``MAX_LOG_BYTES``         256 MiB             one joint log (CSV, or a rosbag2's storage files)
``MAX_LOG_ROWS``          2,000,000           samples of one log (33 min at 1 kHz)
``MAX_LINE_CHARS``        65,536              characters of one CSV line
========================  ==================  ==================================================

A 10⁶-point trajectory is thus refused after reading its size, or at the 100,001st point of the
scan (a fraction of a second), never after building it.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

MAX_FILE_BYTES = 32 * 1024 ** 2
MAX_DEPTH = 32
MAX_ALIASES = 1000
MAX_NODES = 4_000_000
MAX_ITEMS = 100_000
MAX_POINTS = MAX_ITEMS
MAX_LOG_BYTES = 256 * 1024 ** 2
MAX_LOG_ROWS = 2_000_000
MAX_LINE_CHARS = 65_536


class FileLimitError(ValueError):
    """A file (or text) beyond one of this module's limits; the message names it and the
    limit."""


def _mib(n):
    return f"{n / 1024 ** 2:.3g} MiB"


def check_text_size(text, name):
    """FileLimitError if ``text`` (str or bytes) is larger than :data:`MAX_FILE_BYTES`."""
    if len(text) > MAX_FILE_BYTES:
        raise FileLimitError(f"{name}: {_mib(len(text))} is more than the limit of "
                             f"{_mib(MAX_FILE_BYTES)} (mbs_dynamics.model.limits.MAX_FILE_BYTES)")


def read_bytes(path, what="file", limit="MAX_FILE_BYTES"):
    """The bytes of ``path``, refused before reading when larger than the limit named
    ``limit`` (a constant of this module: :data:`MAX_FILE_BYTES`, :data:`MAX_LOG_BYTES`).

    Raises:
        FileLimitError: too large. OSError: unreadable (as ``open``).
    """
    path = os.fspath(path)
    most = globals()[limit]
    size = os.stat(path).st_size
    if size > most:
        raise FileLimitError(f"{path}: {what} of {_mib(size)} is more than the limit of "
                             f"{_mib(most)} (mbs_dynamics.model.limits.{limit})")
    chunks, got = [], 0
    with open(path, "rb") as f:   # in chunks: a pipe or a growing file is bounded all the same
        while got <= most:
            chunk = f.read(min(max(size, 1 << 16), most + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    data = b"".join(chunks)
    if len(data) > most:
        raise FileLimitError(f"{path}: {what} is more than the limit of {_mib(most)} "
                             f"(mbs_dynamics.model.limits.{limit})")
    return data


def read_text(path, what="file"):
    """``read_bytes`` decoded as UTF-8; FileLimitError (a ValueError) also for a binary file."""
    data = read_bytes(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileLimitError(f"{path}: not a text file (expected UTF-8 {what})") from None
    if "\x00" in text:
        raise FileLimitError(f"{path}: not a text file (expected UTF-8 {what})")
    return text


# ------------------------------------------------------------------------------------- YAML
def _yaml_limits(text, name):
    """Walk the YAML event stream (libyaml when available) and enforce the limits; no object is
    built. The expanded size counts each alias as the size of what it names."""
    import yaml
    from yaml.events import (AliasEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                             SequenceEndEvent, SequenceStartEvent)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    starts = (SequenceStartEvent, MappingStartEvent)
    ends = (SequenceEndEvent, MappingEndEvent)
    stack = [[0, None, 0, MAX_ITEMS]]   # per open collection: expanded size, anchor, entries,
    #                                     the entries allowed (a mapping's count keys and values)
    sizes = {}               # anchor -> expanded size of what it names
    total = aliases = 0
    try:
        while loader.check_event():
            ev = loader.get_event()
            t = type(ev)
            if t is ScalarEvent or t is AliasEvent:
                if t is AliasEvent:
                    aliases += 1
                    if aliases > MAX_ALIASES:
                        raise FileLimitError(f"{name}: more than {MAX_ALIASES} YAML aliases "
                                             "(mbs_dynamics.model.limits.MAX_ALIASES)")
                    c = sizes.get(ev.anchor, 1)
                else:
                    c = 1
                    if ev.anchor is not None:
                        sizes[ev.anchor] = 1
                top = stack[-1]
                top[0] += c
                top[2] += 1
                total += c
            elif t in starts:
                if len(stack) > MAX_DEPTH:
                    raise FileLimitError(f"{name}: nested more than {MAX_DEPTH} levels deep "
                                         "(mbs_dynamics.model.limits.MAX_DEPTH)")
                stack.append([1, ev.anchor, 0,
                              MAX_ITEMS if t is SequenceStartEvent else 2 * MAX_ITEMS])
                total += 1
            elif t in ends:
                c, anchor, _, _ = stack.pop()
                if anchor is not None:
                    sizes[anchor] = c
                top = stack[-1]
                top[0] += c
                top[2] += 1
            else:
                continue
            if stack[-1][2] > stack[-1][3]:
                raise FileLimitError(f"{name}: a list or mapping with more than {MAX_ITEMS} "
                                     "entries (mbs_dynamics.model.limits.MAX_ITEMS, e.g. the "
                                     "points of a trajectory)")
            if total > MAX_NODES:
                raise FileLimitError(f"{name}: more than {MAX_NODES} values once YAML aliases "
                                     "are expanded (mbs_dynamics.model.limits.MAX_NODES)")
    finally:
        loader.dispose()


def parse_yaml(text, name="<YAML text>"):
    """YAML text → Python data (safe types only) within the limits.

    Raises:
        FileLimitError: beyond a limit. ValueError: not valid YAML (one line, naming ``name``).
    """
    import yaml
    check_text_size(text, name)
    try:
        _yaml_limits(text, name)
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ValueError(f"{name}: invalid YAML ({' '.join(str(exc).split())})") from None
    except FileLimitError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise ValueError(f"{name}: invalid YAML ({' '.join(str(exc).split())})") from None
    except RecursionError:  # not reachable within MAX_DEPTH; kept as a guard
        raise FileLimitError(f"{name}: nested too deeply") from None


# ------------------------------------------------------------------------------------- JSON
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _json_limits(text, name):
    """Depth and entries per container of JSON text, vectorised over its structural characters
    (strings blanked first); nothing is built."""
    s = _JSON_STRING.sub('""', text)
    b = np.frombuffer(s.encode("utf-8", "replace"), dtype=np.uint8)
    opens = (b == ord("[")) | (b == ord("{"))
    closes = (b == ord("]")) | (b == ord("}"))
    commas = b == ord(",")
    keep = opens | closes | commas
    if not keep.any():
        return
    kind = np.where(opens[keep], 1, np.where(closes[keep], -1, 0)).astype(np.int64)
    depth = np.cumsum(kind)                    # depth after each structural character
    if depth.max() > MAX_DEPTH:
        raise FileLimitError(f"{name}: nested more than {MAX_DEPTH} levels deep "
                             "(mbs_dynamics.model.limits.MAX_DEPTH)")
    if depth.min() < 0:
        return  # unbalanced: json reports it
    if np.count_nonzero(kind == 0) + np.count_nonzero(kind == 1) > MAX_NODES:
        raise FileLimitError(f"{name}: more than {MAX_NODES} values "
                             "(mbs_dynamics.model.limits.MAX_NODES)")
    # a comma at depth d belongs to the latest container opened at depth d
    for d in range(1, int(depth.max()) + 1):
        sel = ((kind == 1) & (depth == d)) | ((kind == 0) & (depth == d))
        k = kind[sel]
        if not k.size:
            continue
        group = np.cumsum(k)                   # container index at this depth
        per = np.bincount(group[k == 0]) if np.any(k == 0) else np.zeros(1, dtype=np.int64)
        if per.max() + 1 > MAX_ITEMS:
            raise FileLimitError(f"{name}: a list or mapping with more than {MAX_ITEMS} entries "
                                 "(mbs_dynamics.model.limits.MAX_ITEMS, e.g. the points of a "
                                 "trajectory)")


def parse_json(text, name="<JSON text>"):
    """JSON text → Python data within the limits (ValueError naming ``name`` if invalid)."""
    check_text_size(text, name)
    _json_limits(text, name)
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise ValueError(f"{name}: invalid JSON ({' '.join(str(exc).split())})") from None
    except RecursionError:  # not reachable within MAX_DEPTH; kept as a guard
        raise FileLimitError(f"{name}: nested too deeply") from None


def load_data_file(path, what="file", kinds=(".yaml", ".yml", ".json")):
    """Read and parse a YAML (.yaml/.yml) or JSON (.json) file within the limits.

    Raises:
        FileLimitError or ValueError (naming the file): too large, too deep, too many aliases or
        entries, not UTF-8 text, invalid, or an extension not in ``kinds``. OSError: unreadable.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in kinds:
        raise ValueError(f"{path}: unknown {what} file type '{suffix}' (use "
                         f"{', '.join(kinds[:-1])} or {kinds[-1]})")
    text = read_text(path, what)
    if suffix == ".json":
        return parse_json(text, str(path))
    return parse_yaml(text, str(path))
