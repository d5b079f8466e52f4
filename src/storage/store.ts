// The storage interface: the domain talks to this, and each database has an adapter behind it.

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

export interface IdempotencyClaimRequest extends IdempotencyRef {
  requestHash: string
  now: Date
  /** Records older than this are expired and no longer replayed. */
  retentionMs: number
  /** A claim not completed within this time is taken to belong to a request that died. */
  leaseMs: number
}

export type IdempotencyClaim =
  | { outcome: 'claimed' }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' }
  | { outcome: 'completed'; petId: bigint }

export interface Store {
  readonly kind: string
  listPets(query: PetPageQuery): Promise<Pet[]>
  getPet(id: bigint): Promise<Pet | null>
  /**
   * getPet in the same turn, as the `Pet` serializer's JSON, as of `version` (dataVersion().pets
   * read just before) or later: for the fast lane, from adapters whose reads never wait.
   */
  getPetJsonAt?(id: bigint, version: number): string | null
  /**
   * Adds a pet and resolves once it is durable. With `completes`, the idempotency claim is
   * completed in the same transaction, so a replay can never find a claim without its pet.
   */
  createPet(pet: NewPet, completes?: IdempotencyRef): Promise<Pet>
  /**
   * createPet without an idempotency claim, settling through one of the callbacks instead of a
   * promise (PetService.createThen, for the fast lane).
   */
  createPetThen?(pet: NewPet, created: (pet: Pet) => void, failed: (err: unknown) => void): void
  /**
   * Bulk load (`petstore seed`): adds the pets in one transaction, with ascending ids in the order
   * given, and resolves once they are durable. One commit for the lot instead of group commit.
   */
  insertPets(pets: NewPet[]): Promise<void>
  claimIdempotencyKey(request: IdempotencyClaimRequest): Promise<IdempotencyClaim>
  releaseIdempotencyKey(ref: IdempotencyRef): Promise<void>
  deleteIdempotencyKeysBefore(cutoff: Date): Promise<number>
  insertApiKey(key: ApiKeyRecord): Promise<void>
  findApiKey(id: string): Promise<ApiKeyRecord | null>
  /** findApiKey answered in the same turn, for adapters whose reads never wait; others leave it out. */
  findApiKeyNow?(id: string): ApiKeyRecord | null
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Marks the key revoked; false when no such key exists or it was already revoked. */
  revokeApiKey(id: string, at: Date): Promise<boolean>
  countApiKeys(): Promise<number>
  /** Resolves when the database answers; rejects otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
  /**
   * Numbers that move whenever committed pets, or API keys, may have changed, whoever committed
   * them: a cached result serves only at its numbers, read after the request came. Else no cache.
   */
  dataVersion?(): DataVersion | Promise<DataVersion>
  /** Usage figures for metrics, read at each scrape; adapters without them leave this out. */
  stats?(): StoreStats
  /** Calls the listener with the size of each group commit; for adapters that batch writes. */
  onWriteBatch?(listener: (size: number) => void): void
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
 * The store's dataVersion, or undefined when it has none or cannot give it now: callers then use
 * nothing cached, and the request's own query reports the failure.
 */
export function readDataVersion(
  store: Store,
): DataVersion | undefined | Promise<DataVersion | undefined> {
  try {
    const version = store.dataVersion?.()
    return version instanceof Promise ? version.catch(() => undefined) : version
  } catch {
    return undefined
  }
}
