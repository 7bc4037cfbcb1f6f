"""The text the synthetic workloads are made of: one-line templates (short-homogeneous), varied chat
questions (long-diverse) and natural filler sentences that lengthen a prompt to an exact token count
(workload.fit_to_tokens), and the one-token words of Mooncake trace prompts (trace.py). Pure; seeded by the
caller's ``random.Random``."""

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

#: Common English words; those that are one token of the target's tokenizer make Mooncake prompts (profile/trace.py).
WORDS = (
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from", "his",
    "her", "they", "this", "which", "had", "not", "are", "but", "one", "have", "were", "all", "their", "there",
    "been", "when", "who", "will", "more", "would", "them", "some", "into", "time", "only", "other", "new", "can",
    "about", "could", "than", "first", "these", "may", "like", "over", "such", "years", "after", "most", "where",
    "made", "many", "before", "through", "back", "water", "well", "people", "also", "good", "well", "long",
    "little", "work", "world", "day", "place", "old", "great", "year", "same", "both", "under", "three", "life",
    "house", "small", "every", "own", "found", "still", "between", "home", "while", "last", "land", "high", "city",
    "night", "school", "light", "next", "road", "river", "story", "hand", "open", "early", "paper", "music",
    "field", "money", "north", "south", "state", "family", "market", "garden", "window", "table", "letter",
    "station", "morning", "evening", "summer", "winter", "train", "bridge", "church", "island", "forest", "village",
    "mountain", "street", "teacher", "doctor", "friend", "mother", "father", "child", "power", "value", "plan",
    "idea", "order", "word", "voice", "answer", "change", "number", "point", "group", "country", "question",
    "system", "program", "report", "service", "office", "price", "study", "history", "member",
)
