"""Bit-packed levels decode through the reader's out-of-line kernel at every width and tail
length, including the size ties Lance's tail rule settles."""
import numpy as np
import pytest

from lancefmt.encoding.v2_1._fastlanes import decode_ool_chunks
from lancefmt.encoding.v2_1.level_encoder import LevelPacker


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 13, 16])
@pytest.mark.parametrize("count", [1, 192, 1023, 1024, 1195, 3000])
def test_levels_round_trip(width, count):
    rng = np.random.default_rng(width * 7919 + count)
    levels = rng.integers(0, 1 << width, count).astype(np.uint16)
    levels[0] = (1 << width) - 1
    packer = LevelPacker(levels)
    assert packer.width == width
    a, b = count // 3, count
    data = np.frombuffer(packer.chunk(0, a) + packer.chunk(a, b), dtype=np.uint8)
    first = len(packer.chunk(0, a))
    out = decode_ool_chunks(data, np.array([0, first]), np.array([first, len(data) - first]),
                            np.array([a, b - a]), 16, width)
    assert np.array_equal(out, levels)
