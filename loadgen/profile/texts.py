"""The text the synthetic workloads are made of: one-line templates (short-homogeneous), varied chat
questions (long-diverse) and natural filler sentences that lengthen a prompt to an exact token count
(workload.fit_to_tokens). Pure; seeded by the caller's ``random.Random``."""

from __future__ import annotations

import random

SHORT_TEMPLATES = (
    "The history of {topic} began when",
    "Here is a short story about a {adjective} {animal}:",
    "In one sentence, {city} is known for",
    "The most important thing to know about {topic} is that",
    "Once upon a time, a {adjective} {animal} lived in {city}. One day,",
)
TOPICS = (
    "the printing press", "steam engines", "the bicycle", "coffee", "the telescope", "paper money",
    "the violin", "chess", "glass", "the compass", "vaccines", "the railway", "photography", "tea",
    "the postal service", "bridges", "maps", "clocks", "the piano", "bread",
)
ADJECTIVES = ("brave", "curious", "sleepy", "clever", "tiny", "grumpy", "kind", "lonely", "happy", "old")
ANIMALS = ("fox", "owl", "cat", "turtle", "rabbit", "horse", "whale", "sparrow", "bear", "dog")
CITIES = ("Paris", "Tokyo", "Cairo", "Lima", "Oslo", "Rome", "Sydney", "Toronto", "Nairobi", "Lisbon")

LONG_FORMATS = (
    "Write a numbered list of practical tips about {subject}.",
    "Explain {subject} to a twelve-year-old, in a few paragraphs.",
    "Write a short Python function related to {subject}, then explain how it works.",
    "Write a polite letter to a neighbour about {subject}.",
    "Compare two different approaches to {subject}, with their advantages and drawbacks.",
    "Write a short poem about {subject}.",
    "Give a step-by-step plan for a beginner who wants to learn about {subject}.",
    "Summarize the main arguments for and against {subject}.",
)
SUBJECTS = (
    "growing tomatoes on a balcony", "saving money on groceries", "learning a second language",
    "training for a first marathon", "keeping bees", "reducing screen time", "sorting a list of numbers",
    "planning a trip by train", "composting kitchen waste", "writing clear emails", "repairing a bicycle tyre",
    "baking sourdough bread", "studying for exams", "working from home", "caring for houseplants",
    "recycling electronics", "public libraries", "electric cars", "night-time photography", "board games",
)


FILLER = (
    "It was a quiet morning and the streets were still empty.",
    "Many people remember the details differently, but the main facts are clear.",
    "The idea spread slowly at first, then all at once.",
    "Nobody expected the results to change so much over the following years.",
    "Some of the old records were lost, yet enough survived to tell the story.",
    "Teachers, merchants and travellers all carried the news from town to town.",
    "The weather that season was unusually warm and dry.",
    "Small improvements added up, one careful step after another.",
)


def short_text(rng: random.Random) -> str:
    template = rng.choice(SHORT_TEMPLATES)
    return template.format(
        topic=rng.choice(TOPICS), adjective=rng.choice(ADJECTIVES),
        animal=rng.choice(ANIMALS), city=rng.choice(CITIES),
    )


def long_text(rng: random.Random) -> str:
    return rng.choice(LONG_FORMATS).format(subject=rng.choice(SUBJECTS))
