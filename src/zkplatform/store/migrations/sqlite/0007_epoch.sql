-- zkplatform schema 7 (SQLite): the store's epoch, the identity of its history of changes.
-- A cursor (a vault's sequence number) means something only in the history it was read in:
-- a store restored from a backup numbers its changes again from where the backup stood, and
-- a cursor of the history the restore undid would be taken for one of its own, skipping
-- changes. `zkplatform admin epoch rotate`, a step of every restore, gives the store a new
-- epoch (and records it in every tenant's audit trail); a client that sends its cursor's
-- epoch is then told to start over. ListItems and ListChanges read it in the snapshot of
-- their page.

-- One row, made here with the store's first epoch: 128 random bits as 32 hex digits, the
-- form `epoch rotate` writes (domain.models.new_epoch).
CREATE TABLE store_epoch (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    epoch TEXT NOT NULL
) STRICT;

INSERT INTO store_epoch (singleton, epoch) VALUES (1, lower(hex(randomblob(16))));
