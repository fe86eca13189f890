export default async function backfill() {}
