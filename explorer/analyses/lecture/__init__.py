"""What only the Lesson uses: its induction demo and its pronoun examples."""
