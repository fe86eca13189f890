function handle()
  if #input.text > 10 then
    return {error = "TextTooLong", message = "at most 10 characters"}
  end
  return {ok = true, caller = caller.did}
end
