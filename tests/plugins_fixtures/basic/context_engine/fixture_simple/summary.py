"""Sibling module: Hermes executes it before __init__ so the relative import below works."""


def one_line_summary(messages):
    return f"Summary of {len(messages)} earlier messages."
