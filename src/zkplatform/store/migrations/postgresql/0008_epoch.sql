-- zkplatform schema 8 (PostgreSQL): the store's epoch, the identity of its history of changes.
-- A cursor (a vault's sequence number) means something only in the history it was read in:
-- a database restored from a backup numbers its changes again from where the backup stood,
-- and a cursor of the history the restore undid would be taken for one of its own, skipping
-- changes. `zkplatform admin epoch rotate`, a step of every restore, gives the store a new
-- epoch (and records it in every tenant's audit trail); a client that sends its cursor's
-- epoch is then told to start over. ListItems and ListChanges read it in the statement of
-- their page.

-- One row, made here with the store's first epoch: 32 hex digits, the form `epoch rotate`
-- writes (domain.models.new_epoch); gen_random_uuid draws them from the server's strong
-- random source (122 random bits: its version and variant bits are fixed).
CREATE TABLE store_epoch (
    singleton boolean PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    epoch text NOT NULL
);

INSERT INTO store_epoch (epoch) VALUES (replace(gen_random_uuid()::text, '-', ''));
