// The storage interface: the domain talks to this, and each database has an adapter behind it.
import type { Deadline } from './deadline.js'
import { StorageUnavailableError } from './errors.js'

export type { Deadline } from './deadline.js'

export const petStatuses = ['available', 'pending', 'sold'] as const
export type PetStatus = (typeof petStatuses)[number]

export interface NewPet {
  name: string
  categoryId: bigint
  status?: PetStatus
}

export interface Pet extends NewPet {
  id: bigint
}

export interface PetPageQuery {
  /** Return only pets whose id is greater than this (keyset pagination); null for the first page. */
  afterId: bigint | null
  status: PetStatus | null
  limit: number
}

export interface ApiKeyRecord {
  id: string
  name: string
  /** SHA-256 of the key's secret part; the key itself is never stored. */
  secretHash: Buffer
  createdAt: Date
  expiresAt: Date | null
  revokedAt: Date | null
}

/** Identifies one idempotent request: the key a client sent, scoped to the API key that sent it. */
export interface IdempotencyRef {
  apiKeyId: string
  key: string
}

/**
 * One claim of an Idempotency-Key: the key, and a token that no other claim of it holds. Completing
 * or releasing a claim matches the token, so a create whose outcome was unknown when its claim was
 * released (or taken over) can never complete a later claim of the same key.
 */
export interface IdempotencyClaimRef extends IdempotencyRef {
  token: string
}

export interface IdempotencyClaimRequest extends IdempotencyClaimRef {
  requestHash: string
  now: Date
  /** Records older than this are expired and no longer replayed. */
  retentionMs: number
  /** A claim not completed within this time is taken to belong to a request that died. */
  leaseMs: number
  deadline?: Deadline
}

export type IdempotencyClaim =
  | { outcome: 'claimed' }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' }
  | { outcome: 'completed'; petId: bigint }

export interface Store {
  readonly kind: string
  /**
   * Reads and writes take the request's deadline (deadline.ts): an adapter that waits on a server
   * gives up by then with StorageUnavailableError; one that never waits may ignore it.
   */
  listPets(query: PetPageQuery, deadline?: Deadline): Promise<Pet[]>
  getPet(id: bigint, deadline?: Deadline): Promise<Pet | null>
  /**
   * Adds a pet and resolves once it is durable. With `completes`, the idempotency claim is
   * completed in the same transaction, so a replay can never find a claim without its pet; a
   * claim released or taken over meanwhile adds nothing and rejects with ClaimReleasedError.
   */
  createPet(pet: NewPet, completes?: IdempotencyClaimRef, deadline?: Deadline): Promise<Pet>
  /**
   * Bulk load (`petstore seed`): adds the pets in one transaction, with ascending ids in the order
   * given, and resolves once they are durable. One commit for the lot instead of group commit.
   */
  insertPets(pets: NewPet[]): Promise<void>
  claimIdempotencyKey(request: IdempotencyClaimRequest): Promise<IdempotencyClaim>
  /**
   * Frees a claim whose create failed or whose outcome is unknown: deletes it unless its create
   * completed it. Safe while that create may still commit: it then adds nothing.
   */
  releaseIdempotencyKey(ref: IdempotencyClaimRef, deadline?: Deadline): Promise<void>
  deleteIdempotencyKeysBefore(cutoff: Date): Promise<number>
  insertApiKey(key: ApiKeyRecord): Promise<void>
  findApiKey(id: string, deadline?: Deadline): Promise<ApiKeyRecord | null>
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Marks the key revoked; false when no such key exists or it was already revoked. */
  revokeApiKey(id: string, at: Date): Promise<boolean>
  countApiKeys(): Promise<number>
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
  /**
   * Numbers that move whenever committed pets, or API keys, may have changed, whoever committed
   * them: a cached result serves only at its numbers, read after the request came.
   */
  dataVersion(deadline?: Deadline): Promise<DataVersion>
  /** Usage figures for metrics, read at each scrape. */
  stats(): StoreStats
  /** Calls the listener with the size of each group commit. */
  onWriteBatch(listener: (size: number) => void): void
}

/**
 * What cached reads are checked against. Two numbers, so that a create, which moves `pets`, leaves
 * the remembered API keys good; a store that cannot tell them apart moves both together.
 */
export interface DataVersion {
  pets: number
  keys: number
}

export interface StoreStats {
  /** Connections in use and idle, and requests waiting for one (a pool's size, idle, waiting). */
  connections: { inUse: number; idle: number; waiting: number }
  /** Writes waiting for the next group commit. */
  queuedWrites: number
}

/**
 * The store's dataVersion; undefined when it cannot give it now for a reason other than the
 * database's unavailability (callers then use nothing cached, and the request's own query
 * reports it). A StorageUnavailableError is returned: the request has its answer (503) at once.
 */
export async function readDataVersion(store: Store, deadline?: Deadline): Promise<VersionRead> {
  try {
    return await store.dataVersion(deadline)
  } catch (err) {
    return err instanceof StorageUnavailableError ? err : undefined
  }
}

export type VersionRead = DataVersion | undefined | StorageUnavailableError
