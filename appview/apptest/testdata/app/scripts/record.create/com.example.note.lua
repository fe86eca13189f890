-- Counts a note's words; a note tagged "spam" is not indexed, and one
-- tagged "boom" fails the script.
function handle()
  if record.tag == "spam" then
    return nil
  end
  if record.tag == "boom" then
    error("boom refused")
  end
  local n = 0
  for _ in string.gmatch(record.text, "%S+") do n = n + 1 end
  record.words = n
  return record
end
