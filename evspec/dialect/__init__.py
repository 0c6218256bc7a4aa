"""What a given perf release does with an event string: its verdict, message, caret and quirks."""
