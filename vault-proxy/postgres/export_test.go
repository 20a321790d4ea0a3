package postgres

// AuditEventsPage is the query behind DB.AuditEvents, for tests of its plan.
const AuditEventsPage = auditEventsPage
