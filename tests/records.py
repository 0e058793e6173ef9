"""Records as the tests write them: a dict of a record's fields (the form the tests spell them in)
as the :class:`rfbench.store.Record` that ``RunDir.write_record`` takes."""

from rfbench.store import Record


def as_record(rec) -> Record:
    return rec if isinstance(rec, Record) else Record.from_dict(rec)
