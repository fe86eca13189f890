-- Checks the text, then writes the note to the caller's PDS.
function handle()
  if type(input) ~= "table" or type(input.text) ~= "string" or input.text == "" then
    return {error = "InvalidRequest", message = "text is required"}
  end
  local note = Record("com.example.note", {text = input.text, tag = input.tag, createdAt = "2026-01-01T00:00:00Z"})
  note:save()
  return {uri = note.uri, cid = note.cid}
end
