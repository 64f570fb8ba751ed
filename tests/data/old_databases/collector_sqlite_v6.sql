-- A collector database made by the code of fc41dcb (PRAGMA user_version 6): one grr campaign with
-- four reports of 2024-01-01 and one HPKE key (config 7) of the distributed tables
BEGIN TRANSACTION;
CREATE TABLE aggregates (campaign TEXT, version INTEGER, day TEXT, n INTEGER NOT NULL,
    counts TEXT NOT NULL, PRIMARY KEY (campaign, version, day));
INSERT INTO "aggregates" VALUES('grr',1,'2024-01-01',4,'[2, 1, 1]');
CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT, role TEXT NOT NULL, label TEXT,
    created_day TEXT, expires_day TEXT, last_used_day TEXT, is_public INTEGER NOT NULL DEFAULT 0, campaigns TEXT);
CREATE TABLE campaigns (name TEXT, version INTEGER, fingerprint TEXT NOT NULL, spec TEXT NOT NULL,
    created_day TEXT, closed_day TEXT, PRIMARY KEY (name, version));
INSERT INTO "campaigns" VALUES('grr',1,'a36821546b59350f32d2f7a1a840eab7','{"derived": {"p_star": 0.5761168845929205, "q_star": 0.21194155770353973, "variance_factor": 1.2593704837156432}, "domain": ["a", "b", "c"], "epsilon": 1.0, "fingerprint": "a36821546b59350f32d2f7a1a840eab7", "mechanism": "grr", "name": "grr", "version": 1}','2024-01-01',NULL);
CREATE TABLE day_filters (
    day INTEGER PRIMARY KEY,
    reports INTEGER NOT NULL,
    token BLOB NOT NULL,
    bits BLOB
);
INSERT INTO "day_filters" VALUES(738878,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738879,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738880,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738881,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738882,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738883,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738884,0,X'C9FB528A9007571EBF387597ED00D194',X'');
INSERT INTO "day_filters" VALUES(738885,0,X'C9FB528A9007571EBF387597ED00D194',X'');
CREATE TABLE dist_agg_shares (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, report_count INTEGER NOT NULL, share BLOB NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_batches (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    state TEXT NOT NULL, seed_own BLOB, seed_commitment BLOB, answer TEXT,
    PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_campaigns (name TEXT NOT NULL, fingerprint TEXT NOT NULL, role TEXT NOT NULL,
    verify_key BLOB NOT NULL, helper_url TEXT, helper_hpke_config TEXT, state TEXT NOT NULL,
    PRIMARY KEY (name, fingerprint));
CREATE TABLE dist_helper_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, request_digest TEXT NOT NULL, response TEXT NOT NULL);
CREATE TABLE dist_helper_seen (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, job_id TEXT NOT NULL, valid INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE dist_hpke_keys (config_id INTEGER PRIMARY KEY, private_key BLOB NOT NULL,
    created_day TEXT NOT NULL, seq INTEGER NOT NULL DEFAULT 0);
INSERT INTO "dist_hpke_keys" VALUES(7,X'0101010101010101010101010101010101010101010101010101010101010101','2024-01-01',0);
CREATE TABLE dist_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT, lease_owner TEXT, lease_expires DOUBLE PRECISION);
CREATE TABLE dist_rejections (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch, reason));
CREATE TABLE dist_releases (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    version INTEGER NOT NULL, batch TEXT NOT NULL, release TEXT NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch));
CREATE TABLE dist_reports (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, public_share BLOB NOT NULL, leader_share BLOB NOT NULL,
    helper_share TEXT NOT NULL, job_id TEXT, state TEXT NOT NULL, error TEXT) WITHOUT ROWID;
CREATE TABLE rate_buckets (key_hash TEXT PRIMARY KEY, tokens REAL, updated REAL);
CREATE TABLE report_versions (
    id INTEGER PRIMARY KEY,
    campaign TEXT NOT NULL,
    version INTEGER NOT NULL,
    UNIQUE (campaign, version)
);
INSERT INTO "report_versions" VALUES(1,'grr',1);
CREATE TABLE reports (
    day INTEGER NOT NULL,
    report_id BLOB NOT NULL,
    version_id INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (day, report_id)
) WITHOUT ROWID;
INSERT INTO "reports" VALUES(738886,X'00000000000000000000000000000001',1,0);
INSERT INTO "reports" VALUES(738886,X'00000000000000000000000000000002',1,1);
INSERT INTO "reports" VALUES(738886,X'00000000000000000000000000000003',1,0);
INSERT INTO "reports" VALUES(738886,X'00000000000000000000000000000004',1,2);
CREATE UNIQUE INDEX idx_campaigns_name_fingerprint ON campaigns (name, fingerprint);
CREATE INDEX idx_dist_reports_batch ON dist_reports (campaign, fingerprint, batch, state);
CREATE INDEX idx_dist_reports_job ON dist_reports (job_id);
CREATE INDEX idx_dist_reports_pending ON dist_reports (state, job_id);
CREATE INDEX idx_dist_helper_seen_batch ON dist_helper_seen (campaign, fingerprint, batch, valid);
COMMIT;
PRAGMA user_version = 6;
