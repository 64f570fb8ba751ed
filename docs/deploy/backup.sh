#!/bin/sh
# Consistent backup of a live collector database: backup.sh DB DIR writes DIR/collector-YYYY-MM-DD.db.
# A plain cp of a WAL database copies the main file without the committed transactions still in
# collector.db-wal (or a torn mix of both); VACUUM INTO reads one snapshot through SQLite, WAL included,
# while the collector keeps writing, and writes a compact file without a WAL of its own.
set -eu
db=$1
dir=$2
day=$(date -u +%F)
out="$dir/collector-$day.db"
mkdir -p "$dir"
rm -f "$out.partial"
sqlite3 -cmd '.timeout 10000' "$db" "VACUUM INTO '$out.partial'"
test "$(sqlite3 "$out.partial" 'PRAGMA integrity_check')" = ok
mv "$out.partial" "$out"
echo "$out"
