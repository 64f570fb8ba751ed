"""The helper process's opened input shares (``helper.OpenedShares``): kept per batch for the later levels of a
walk, for the last few batches only, and found only for the very same sealed share."""

from collector.kinds.poplar1.helper import OpenedShares

SEALED = (b"\x01" * 16, b"public", 7, b"ciphertext")


def test_a_share_is_found_only_for_the_same_batch_and_sealed_share():
    opened = OpenedShares(batches=2)
    opened.put(("top", "f", "2026-12-02"), SEALED, b"plain")
    assert opened.get(("top", "f", "2026-12-02"), SEALED) == b"plain"
    assert opened.get(("top", "f", "2026-12-03"), SEALED) is None
    for changed in range(4):  # another report id, public share, config id or ciphertext
        other = tuple(b"x" if i == changed and isinstance(part, bytes) else 8 if i == changed else part
                      for i, part in enumerate(SEALED))
        assert opened.get(("top", "f", "2026-12-02"), other) is None


def test_only_the_batches_walked_last_are_kept():
    opened = OpenedShares(batches=2)
    for day in ("2026-12-01", "2026-12-02", "2026-12-03"):
        opened.put(("top", "f", day), SEALED, day.encode())
    assert opened.get(("top", "f", "2026-12-01"), SEALED) is None
    assert opened.get(("top", "f", "2026-12-03"), SEALED) == b"2026-12-03"
    opened.put(("top", "f", "2026-12-02"), SEALED, b"again")  # walked again: now the latest
    opened.put(("top", "f", "2026-12-04"), SEALED, b"4")
    assert opened.get(("top", "f", "2026-12-03"), SEALED) is None
    assert opened.get(("top", "f", "2026-12-02"), SEALED) == b"again"
