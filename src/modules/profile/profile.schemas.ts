import { type Static, type TSchema, Type } from 'typebox'

// Registration's rules (Fortify's CreateNewUser); a NUL byte is refused, as no database can store it.
const Name = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\x00]*$' })
const Email = Type.String({ minLength: 1, maxLength: 255, format: 'email' })

// `null` (or an empty string, which Ajv reads as null) clears an optional field; Laravel's `nullable`.
const Nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([Type.Null(), schema]))

/** Fortify's profile information: name and email. */
export const ProfileInformationBody = Type.Object({ name: Name, email: Email })
export type ProfileInformationBody = Static<typeof ProfileInformationBody>

/** Name and email plus the optional profile fields; a field left out keeps its value. */
export const ProfileBody = Type.Object({
  name: Name,
  email: Email,
  // E.164 in international form ("+" and 7 to 15 digits); spaces, dots, dashes and brackets may separate them.
  phone: Nullable(
    Type.String({
      maxLength: 32,
      pattern: '^\\+[1-9](?:[ .()-]*[0-9]){6,14}$',
      examples: ['+33 6 12 34 56 78'],
    }),
  ),
  // An IANA zone name, aliases included ("Europe/Paris", "UTC", "Asia/Kolkata").
  timezone: Nullable(Type.String({ maxLength: 64, format: 'timezone', examples: ['Europe/Paris'] })),
  // ISO 3166-1 alpha-2, in capitals.
  country: Nullable(Type.String({ maxLength: 2, format: 'country-code', examples: ['FR'] })),
})
export type ProfileBody = Static<typeof ProfileBody>

/** Fortify's UpdateUserPassword: the current password, then the new one twice. */
export const UpdatePasswordBody = Type.Object({
  current_password: Type.String({ minLength: 1, maxLength: 1024 }),
  password: Type.String({ minLength: 8, maxLength: 255 }),
  password_confirmation: Type.Optional(Type.String({ maxLength: 255 })),
})
export type UpdatePasswordBody = Static<typeof UpdatePasswordBody>

/** A sensitive action confirmed with the account's password (Jetstream's ConfirmPassword). */
export const PasswordConfirmationBody = Type.Object({
  password: Type.String({ minLength: 1, maxLength: 1024 }),
})
export type PasswordConfirmationBody = Static<typeof PasswordConfirmationBody>
