/** Inserts a batch in one IMMEDIATE transaction (one WAL sync) and returns the new ids in order. */
export function createTransaction(db) {
    const insertPet = db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?) RETURNING id');
    const completeIdempotency = db.prepare('UPDATE idempotency_keys SET pet_id = ?, locked_until = NULL WHERE api_key_id = ? AND idempotency_key = ?');
    const commit = db.transaction((items) => items.map(({ pet, completes }) => {
        const { id } = insertPet.get(pet.name, pet.categoryId, pet.status ?? null, Date.now());
        if (completes)
            completeIdempotency.run(id, completes.apiKeyId, completes.key);
        return id;
    }));
    return (items) => commit.immediate(items);
}
//# sourceMappingURL=pet-writes.js.map