const toDate = (ms) => (ms === null ? null : new Date(Number(ms)));
export const toApiKey = (row) => ({
    id: row.id,
    name: row.name,
    secretHash: row.secret_hash,
    createdAt: new Date(Number(row.created_at)),
    expiresAt: toDate(row.expires_at),
    revokedAt: toDate(row.revoked_at),
});
//# sourceMappingURL=api-key-row.js.map