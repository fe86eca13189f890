// Page not found: the server-rendered message and the way back are all
// it holds.
export default function notFound() {}
