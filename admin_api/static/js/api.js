// The admin API over fetch: same origin, cookie login, JSON {error, detail} on failure.

/** A refused or failed call, carrying the API's own error code and detail (status 0: no reply). */
export class ApiError extends Error {
  constructor(status, code, detail, retryAfter = null) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }
}

/**
 * JSON.parse reviver keeping integers beyond 2^53 (Discord ids) exact, as strings, where the
 * browser passes the source text (context.source); elsewhere they stay (rounded) numbers.
 */
export function keepBigIntegers(key, value, context) {
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)
      && typeof context?.source === 'string' && /^-?[0-9]+$/.test(context.source)) {
    return context.source;
  }
  return value;
}

/** Query string from an object; empty values are left out. */
export function queryString(query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null || value === '' || value === false) continue;
    params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Client for the admin API; `onUnauthorized` runs when a login expires. */
export class Api {
  constructor({onUnauthorized = () => {}} = {}) {
    this.onUnauthorized = onUnauthorized;
  }

  async call(method, path, {body, query} = {}) {
    const init = {method, headers: {Accept: 'application/json'}, credentials: 'same-origin'};
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path + queryString(query), init);
    } catch (error) {
      throw new ApiError(0, 'network_error', `The admin API cannot be reached (${error.message}).`);
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text, keepBigIntegers);
      } catch {
        throw new ApiError(response.status, 'bad_response', `Unexpected reply (HTTP ${response.status}).`);
      }
    }
    if (!response.ok) {
      const error = new ApiError(
        response.status,
        data?.error ?? 'http_error',
        data?.detail ?? `HTTP ${response.status} ${response.statusText}`,
        response.headers.get('Retry-After'),
      );
      error.fields = data?.fields ?? null; // input name → why it was refused, when given
      if (response.status === 401 && !path.startsWith('/api/auth/')) {
        error.handled = true; // the login form takes over; callers need not report it again
        this.onUnauthorized(error);
      }
      throw error;
    }
    return data;
  }

  get(path, query) { return this.call('GET', path, {query}); }
  post(path, body, query) { return this.call('POST', path, {body, query}); }
  put(path, body, query) { return this.call('PUT', path, {body, query}); }
  patch(path, body) { return this.call('PATCH', path, {body}); }
  del(path, query) { return this.call('DELETE', path, {query}); }
}
