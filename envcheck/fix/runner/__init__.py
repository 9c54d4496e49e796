"""The repair's I/O: the target's pip (`apply`), its files kept and put back (`keep`), the journal
and lock (`journal`), the target asked once (`site`), the interpreter's transaction
(`transaction`) and both parts together (`repair`)."""
