function handle()
  local page = db.query{
    collection = "com.example.notes.note",
    filter = {field = "tags[0]", value = params.tag},
    limit = tonumber(params.limit) or 20, cursor = params.cursor,
  }
  local notes = {}
  for i, r in ipairs(page.records) do
    notes[i] = {uri = r.uri, cid = r.cid, note = r, likes = i}
  end
  return {notes = notes, cursor = page.cursor}
end
