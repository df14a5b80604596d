"""Placeholder: filled in by its author."""
