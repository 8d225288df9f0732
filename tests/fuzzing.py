"""What the fuzz tests share: random damage to a valid file, as a hypothesis strategy."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def damaged(draw, valid: bytes) -> bytes:
    """`valid` with a few bytes overwritten, a run cut out or inserted, or cut short; or random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4096))
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["overwrite", "cut", "insert", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "overwrite" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        else:
            del data[at:]
    return bytes(data)
