"""Augmentation's extractors: what turns captured messages into facts (spec: Facts).

Pure: an extractor reads messages and proposes candidates; ``memoryhub.services.augmentation``
decides what they change (duplicates merge, contradictions invalidate) and writes it.
"""
