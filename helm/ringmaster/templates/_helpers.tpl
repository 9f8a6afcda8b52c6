{{/* Names and labels shared by every template. */}}

{{/* The chart name, or nameOverride. */}}
{{- define "ringmaster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or <release> when it already holds the chart name; 63 characters. */}}
{{- define "ringmaster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "ringmaster.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "ringmaster.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The app.kubernetes.io/* set (Kubernetes' recommended labels) on everything the chart installs. */}}
{{- define "ringmaster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ringmaster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ringmaster
{{- end -}}

{{/* The labels the operator Deployment selects its pods by (immutable after install). */}}
{{- define "ringmaster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ringmaster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The operator's ServiceAccount. */}}
{{- define "ringmaster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ringmaster.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The worker image of jobs without spec.image: ringmaster/trainer at the chart's appVersion
unless trainerImage names another. */}}
{{- define "ringmaster.trainerImage" -}}
{{- default (printf "ringmaster/trainer:%s" .Chart.AppVersion) .Values.trainerImage -}}
{{- end -}}

{{/* The operator image, tag defaulting to the chart's appVersion. */}}
{{- define "ringmaster.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The restricted Pod Security Standard for a container (also used by the test pod). */}}
{{- define "ringmaster.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The restricted Pod Security Standard at pod level. */}}
{{- define "ringmaster.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}
