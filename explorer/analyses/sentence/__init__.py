"""Analyses of one sentence registered once (explorer/analyses/registry.py): each module defines `ANALYSIS`, and the
command line, the notebook API, the Heads page, the corpus jobs, the Glossary and the docs' list pick it up."""
