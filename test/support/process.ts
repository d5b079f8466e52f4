/** The test's environment without any setting of the service, so only what a test sets applies. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('PETSTORE_') && name !== 'PORT' && name !== 'HOST') env[name] = value
  }
  return env
}
