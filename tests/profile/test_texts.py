"""profile/texts.py: the synthetic workloads' text is a function of the caller's seed alone, every template
placeholder is filled from its own list, and the four choices of a short text come in template, topic,
adjective, animal, city order (so a pair file's seed gives the same prompts on every machine)."""

from __future__ import annotations

import random
import re

from loadgen.profile.texts import (
    ADJECTIVES,
    ANIMALS,
    CITIES,
    FILLER,
    LONG_FORMATS,
    SHORT_TEMPLATES,
    SUBJECTS,
    TOPICS,
    WORDS,
    long_text,
    short_text,
)


def test_the_same_seed_gives_the_same_texts() -> None:
    a, b = random.Random(7), random.Random(7)
    assert [short_text(a) for _ in range(50)] == [short_text(b) for _ in range(50)]
    assert [long_text(a) for _ in range(50)] == [long_text(b) for _ in range(50)]
    assert len({short_text(random.Random(s)) for s in range(200)}) > 100  # seeds give varied prompts


def test_a_short_text_draws_template_topic_adjective_animal_city_in_that_order() -> None:
    rng, mirror = random.Random(11), random.Random(11)
    for _ in range(30):
        template, topic = mirror.choice(SHORT_TEMPLATES), mirror.choice(TOPICS)
        adjective, animal, city = mirror.choice(ADJECTIVES), mirror.choice(ANIMALS), mirror.choice(CITIES)
        assert short_text(rng) == template.format(topic=topic, adjective=adjective, animal=animal, city=city)


def test_a_long_text_fills_its_subject() -> None:
    rng = random.Random(3)
    every = {f.format(subject=s) for f in LONG_FORMATS for s in SUBJECTS}
    texts = [long_text(rng) for _ in range(60)]
    assert set(texts) <= every and len(set(texts)) > 30


def test_filler_and_words() -> None:
    assert all(s.endswith(".") and s[0].isupper() for s in FILLER)
    assert all(re.fullmatch(r"[a-z]+", w) for w in WORDS) and len(set(WORDS)) >= 150
