"""Analyses of one sentence (or one image): what a trace shows when read a certain way. A module here that defines
`ANALYSIS` is registered (explorer/analyses/registry.py): the command line, the notebook API, the Heads page, the corpus
jobs, the Glossary and the docs' list pick it up."""
