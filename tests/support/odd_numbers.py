"""Numbers in every spelling a client may send, for the fuzzers of integer fields (query parameters, headers,
form fields): Unicode digits such as `²` and `٣` that pass `str.isdigit()` (and `int()` refuses or reads),
doubled signs, underscores, spaces, exponents, huge values."""

from __future__ import annotations

from hypothesis import strategies as st

odd_digit = st.characters(categories=["Nd", "No"])  # ², ٣, ９, ①: isdigit() or isnumeric(), int() often not
number_like = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.builds(
        lambda sign, body: sign + body,
        st.sampled_from(["", "-", "--", "+", " ", "-+", "\t"]),
        st.text(alphabet=st.one_of(st.sampled_from("0123456789_ .e-"), odd_digit), max_size=25),
    ),
    st.sampled_from(["²", "--5", "-²", "٣", "1²", "+5", "5_000", " 7", "7 ", "0x10", "1e3", "９", "1" * 40]),
)
# What a header can carry (latin-1, no control characters, no surrounding spaces): `²`, `³` and `¹` are the
# latin-1 characters `str.isdigit()` accepts.
LATIN1_ODD_DIGITS = "²³¹"
header_number_like = st.one_of(
    number_like.map(lambda v: "".join(c for c in v if " " <= c <= "~" or "\xa0" <= c <= "\xff").strip(" \t")),
    st.text(alphabet=st.sampled_from("0123456789-+ ._e" + LATIN1_ODD_DIGITS), max_size=20).map(str.strip),
    st.sampled_from(["²", "1²", "³0", "¹", "-²", "wait=²", "²0", "60²"]),
)
