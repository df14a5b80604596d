"""Words for people: the Lesson's steps, the glossary, counts in words."""
