"""One way to write a number: missing as an en dash, ratios with their CI, memory in GiB."""

from __future__ import annotations

from loadgen.util.numbers import bytes_and_gib, gib, ms, num, ratio


def test_numbers_are_written_one_way() -> None:
    assert (num(None), num(1.23456), num(1.23456, 3)) == ("–", "1.23", "1.235")
    assert (ms(0.0123), ms(0.0123, 1), ms(None)) == ("12.30", "12.3", "–")
    assert ratio(0.5, 0.41, 0.6) == "0.500 [0.410, 0.600]"
    assert ratio(0.5, None, None, 2) == "0.50" and ratio(None) == ratio(None, 0.4, 0.6) == "–"
    assert gib(2**31) == "2.00 GiB" and bytes_and_gib(2**30) == "1,073,741,824 bytes (1.00 GiB)"
