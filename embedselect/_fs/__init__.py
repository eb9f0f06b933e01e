"""What the tool may create, replace and delete on disk: :mod:`.guard` (the one guard every writer goes through) and
:mod:`.owned` (its read side: is a folder the tool's); and what it may read in a folder it was given, :mod:`.inside`."""
