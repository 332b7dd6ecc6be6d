import type { ColumnDefinitionBuilder, CreateTableBuilder } from 'kysely';
import type { Dialect } from './database.ts';

/**
 * Column helpers that keep one migration valid on both engines. Timestamps are
 * `timestamptz` on PostgreSQL and ISO 8601 text on SQLite (which sorts and
 * compares correctly as text); booleans are declared `boolean` on both (SQLite
 * stores 0/1, the adapter turns them back into booleans).
 */
export const timestampType = (dialect: Dialect) => (dialect === 'postgres' ? 'timestamptz' : 'text');

export function withId<T extends string>(table: CreateTableBuilder<T, never>, dialect: Dialect): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres'
    ? table.addColumn('id', 'bigserial', (column) => column.primaryKey())
    : table.addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement());
}

export function withTimestamps<T extends string, C extends string>(table: CreateTableBuilder<T, C>, dialect: Dialect) {
  return table
    .addColumn('created_at', timestampType(dialect), (column) => column.notNull())
    .addColumn('updated_at', timestampType(dialect), (column) => column.notNull());
}

export const notNull = (column: ColumnDefinitionBuilder) => column.notNull();

/** The type of a column that references another table's `id`. */
export const idRefType = (dialect: Dialect) => (dialect === 'postgres' ? 'bigint' : 'integer');
