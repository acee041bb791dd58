"""The corpus of chapters 4 and 8: generated English -> Chinese sentence pairs that know their
own alignments.

Each example is a list of one to four items separated by ";" (Chinese "；"). An item is

* a date: "the 3rd of march , 2021" or "march 3rd , 2021" -> "2021 年 3 月 3 日": the year
  moves to the front and the day to the back;
* a number below one million, in words: "four hundred and twelve thousand , three hundred
  and five" -> "四 十 一 万 二 千 三 百 零 五": English groups digits by thousands, Chinese by
  ten-thousands, so digits are regrouped, and Chinese writes 零 for skipped zeros.

For every target token the generator records which source positions it comes from (the
true alignment), so we can check where attention looks. Nothing is downloaded: the same
generator gives the same corpus on every machine.
"""
from __future__ import annotations

import datetime
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..contracts import contract, positive_int, require

ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
ZH_DIGITS = "零一二三四五六七八九"
ZH_UNITS = {1: "十", 2: "百", 3: "千"}


@dataclass(init=False)
class Pair:
    """One sentence pair. alignment[t] is the set of source positions target token t comes from."""

    source: list
    target: list
    alignment: list

    @contract(where=[require(lambda target, alignment: len(alignment) == len(target),
                             lambda target, alignment: f"alignment has {len(alignment)} entries "
                             f"for {len(target)} target tokens")])
    def __init__(self, source: list, target: list, alignment: list):
        self.source, self.target, self.alignment = source, target, alignment


def ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


# ---- numbers ---------------------------------------------------------------------------
below_a_million = require(lambda n: 1 <= n < 10**6, lambda n: f"n must be in [1, 10^6), got {n}")


@contract(where=[below_a_million])
def english_number(n: int):
    """Words for 1 <= n < 10^6, each with the decimal positions (powers of ten) it expresses.

    Returns [(word, {positions}), ...]: "twelve" in "twelve thousand" expresses positions 4
    and 3; "hundred" expresses the position of the digit before it; "thousand", "and" and ","
    express none.
    """
    def below_hundred(x, shift):
        if x < 10:
            return [(ONES[x], {shift})]
        if x < 20:
            return [(TEENS[x - 10], {shift + 1, shift})]
        words = [(TENS[x // 10], {shift + 1})]
        return words + ([(ONES[x % 10], {shift})] if x % 10 else [])

    def below_thousand(x, shift):
        words = []
        if x >= 100:
            words += [(ONES[x // 100], {shift + 2}), ("hundred", {shift + 2})]
            if x % 100:
                words.append(("and", set()))
        if x % 100:
            words += below_hundred(x % 100, shift)
        return words

    thousands, rest = divmod(n, 1000)
    words = []
    if thousands:
        words += below_thousand(thousands, 3) + [("thousand", set())]
        if rest >= 100:
            words.append((",", set()))
        elif rest:
            words.append(("and", set()))
    if rest:
        words += below_thousand(rest, 0)
    return words


@contract(where=[below_a_million])
def chinese_number(n: int):
    """Characters for 1 <= n < 10^6, each tagged with what it expresses.

    Returns [(char, tag), ...] with tag ("digit", p) for a digit or its unit (十 百 千) at
    decimal position p, ("wan", None) for 万, ("zero", p) for a 零 standing before the digit
    at position p.
    """
    chars = []

    def group(g, shift, leading):
        """A group of up to four digits; leading: no higher group was written before it."""
        digits = [(g // 10**k) % 10 for k in range(3, -1, -1)]  # thousands .. units
        started, pending_zero = False, False
        for k, d in zip(range(3, -1, -1), digits, strict=True):
            p = k + shift
            if d == 0:
                pending_zero = started
                continue
            if pending_zero:
                chars.append(("零", ("zero", p)))
                pending_zero = False
            # 10-19 at the very start are written 十X, not 一十X
            if not (k == 1 and d == 1 and leading and not started):
                chars.append((ZH_DIGITS[d], ("digit", p)))
            if k:
                chars.append((ZH_UNITS[k], ("digit", p)))
            started = True

    wan, low = divmod(n, 10**4)
    if wan:
        group(wan, 4, leading=True)
        chars.append(("万", ("wan", None)))
        if low:
            if low < 1000:  # a gap right after 万 is written 零
                first = max(k for k in range(4) if (low // 10**k) % 10)
                chars.append(("零", ("zero", first)))
            group(low, 0, leading=False)
    else:
        group(low, 0, leading=True)
    return chars


def number_pair(n: int) -> Pair:
    """The pair for one number, e.g. 412305: its words, its characters, their alignment."""
    english = english_number(n)
    source = [w for w, _ in english]
    carriers = {}  # decimal position -> source positions whose word expresses it
    for i, (_, positions) in enumerate(english):
        for p in positions:
            carriers.setdefault(p, set()).add(i)
    thousand = {i for i, (w, _) in enumerate(english) if w == "thousand"}
    ands = [i for i, (w, _) in enumerate(english) if w in ("and", ",")]
    target, alignment = [], []
    for char, (kind, p) in chinese_number(n):
        target.append(char)
        if kind == "digit":
            alignment.append(set(carriers[p]))
        elif kind == "wan":
            alignment.append(set(thousand) | carriers.get(4, set()))
        else:  # 零: the next digit's words, and an "and" or "," just before them
            nxt = carriers[p]
            before = {a for a in ands if a + 1 in nxt}
            alignment.append(set(nxt) | before)
    return Pair(source, target, alignment)


# ---- dates -----------------------------------------------------------------------------
def date_pair(date: datetime.date, day_first: bool) -> Pair:
    """"the 3rd of march , 2021" (day first) or "march 3rd , 2021" -> "2021 年 3 月 3 日"."""
    day, month, year = ordinal(date.day), MONTHS[date.month - 1], str(date.year)
    if day_first:
        source = ["the", day, "of", month, ",", year]
    else:
        source = [month, day, ",", year]
    pos = {w: i for i, w in enumerate(source) if w in (day, month, year)}
    target = [year, "年", str(date.month), "月", str(date.day), "日"]
    alignment = [{pos[year]}, {pos[year]}, {pos[month]}, {pos[month]}, {pos[day]}, {pos[day]}]
    return Pair(source, target, alignment)


# ---- sentences -------------------------------------------------------------------------
FIRST_DAY, LAST_DAY = datetime.date(1990, 1, 1), datetime.date(2029, 12, 31)


def random_item(rng: random.Random) -> Pair:
    if rng.random() < 0.6:
        digits = rng.randint(1, 6)  # as many short numbers as long ones
        return number_pair(rng.randint(10 ** (digits - 1), 10**digits - 1))
    span = (LAST_DAY - FIRST_DAY).days
    date = FIRST_DAY + datetime.timedelta(days=rng.randint(0, span))
    return date_pair(date, day_first=rng.random() < 0.5)


def join_items(items) -> Pair:
    """One sentence from items (each Pair numbered from 0), joined by ";" / "；"."""
    source, target, alignment = [], [], []
    for k, item in enumerate(items):
        if k:
            alignment.append({len(source)})
            source.append(";")
            target.append("；")
        shift = len(source)
        source += item.source
        target += item.target
        alignment += [{i + shift for i in a} for a in item.alignment]
    return Pair(source, target, alignment)


def random_pair(rng: random.Random, n_items: int) -> Pair:
    """A sentence of ``n_items`` random items."""
    return join_items([random_item(rng) for _ in range(n_items)])


def python_rng(generator: torch.Generator | None) -> random.Random:
    """A Python ``random.Random`` seeded from ``generator`` (default: one seeded with 0).

    Sentences are built with Python's generator (choices among words and dates); seeding it
    from a torch.Generator keeps one way of passing randomness through the whole package.
    """
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    return random.Random(int(torch.randint(2**62, (), generator=gen)))


def distinct_pairs(make: Callable[[], Pair], n_pairs: int, seen: set) -> list:
    """``n_pairs`` pairs from ``make()``, called until there are enough, each with a source
    sentence not in ``seen`` (the sentences joined by spaces), which it extends."""
    pairs = []
    while len(pairs) < n_pairs:
        pair = make()
        key = " ".join(pair.source)
        if key not in seen:
            seen.add(key)
            pairs.append(pair)
    return pairs


@contract(n_pairs=positive_int, max_items=positive_int)
def make_corpus(n_pairs: int, generator: torch.Generator | None = None, max_items: int = 4,
                exclude=()):
    """``n_pairs`` distinct pairs with 1..max_items items each (uniformly), none of whose
    source sentences is in ``exclude``."""
    rng = python_rng(generator)
    return distinct_pairs(lambda: random_pair(rng, rng.randint(1, max_items)), n_pairs,
                          {" ".join(s) for s in exclude})


@contract(n_train=positive_int, n_valid=positive_int, n_test=positive_int,
          max_items=positive_int)
def make_splits(n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000,
                generator: torch.Generator | None = None, max_items: int = 4):
    """Fixed, disjoint train / validation / test splits: (train, valid, test) lists of Pair."""
    pairs = make_corpus(n_train + n_valid + n_test, generator=generator, max_items=max_items)
    return (pairs[:n_train], pairs[n_train:n_train + n_valid], pairs[n_train + n_valid:])


@contract(per_items=positive_int, max_items=positive_int)
def make_length_test(per_items: int = 200, generator: torch.Generator | None = None,
                     max_items: int = 4, exclude=()):
    """A test set with exactly ``per_items`` sentences of each number of items 1..max_items,
    none of them in ``exclude``: the lengths are controlled, so every length bucket is full."""
    rng = python_rng(generator)
    seen = {" ".join(s) for s in exclude}
    return [pair for n_items in range(1, max_items + 1)
            for pair in distinct_pairs(functools.partial(random_pair, rng, n_items), per_items,
                                       seen)]
